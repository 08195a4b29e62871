-- A work item queued by `flow submit BUNDLE --items FILE` (docs/batch.md): the bundle's name (the scope) and the item's
-- key. One submission per (bundle, key): a key already queued, running or done is never queued again — the submit
-- that checks it holds a transaction lock on the scope, and this index refuses a second row even so.
ALTER TABLE flow_submissions ADD COLUMN item_scope text, ADD COLUMN item_key text;
CREATE UNIQUE INDEX flow_submissions_item ON flow_submissions (item_scope, item_key) WHERE item_key IS NOT NULL;
