-- An outbox row lives for milliseconds: inserted with its message, deleted once published.
-- As jsonb, a notification for a channel of 1,001 members (about 8 KB) was converted to jsonb
-- and then compressed with pglz before going to TOAST, for a value nobody queries by its
-- contents and that is read back, if ever, only to be parsed again: about 1 ms of
-- PostgreSQL's CPU per such message. As json it is stored as sent, and with EXTERNAL storage
-- it is never compressed (lz4 would do as well where the server has it, but the embedded
-- PostgreSQL has not). No semicolons in these comments: the migration engine splits on them.
ALTER TABLE "event_outbox" ALTER COLUMN "notification" SET DATA TYPE JSON;
ALTER TABLE "event_outbox" ALTER COLUMN "notification" SET STORAGE EXTERNAL;
