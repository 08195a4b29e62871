"""The hosted phone lane (spec §21): a hosted decision queue (`phone.queue`) that only ever sees a pause's closed
context, and a relay beside the runner (`phone.relay`) that publishes that context over outbound HTTPS, fetches the
queue's Ed25519-signed decisions and records them as `flow approve` does, with channel `phone`.

`phone.context` is what both sides agree on: the closed context's fields and bytes, and the signed decision message.
"""
