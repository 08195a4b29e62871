"""What the runner's console and the hosted phone queue share without either seeing the other: operator credentials
(argon2id hashes) and in-memory web sessions with CSRF tokens and a login rate limit."""
