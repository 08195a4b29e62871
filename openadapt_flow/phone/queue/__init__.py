"""`flow queue serve`: the hosted decision queue (spec §21). It never sees a run: it holds closed contexts posted by
relays, pushes them to enrolled phones (Web Push, RFC 8291 aes128gcm + VAPID), lets its own operators decide on its
phone page and hands relays decisions signed with its Ed25519 key. Import-linter keeps runtime/ and store/ out."""
