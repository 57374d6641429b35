-- Zulip's Message.type: 1 for a normal message, 2 for the Notification Bot's notice that a
-- topic was marked resolved or unresolved. Resolving a topic and undoing it within a minute
-- deletes that notice instead of posting a second one (actions/move-notices.ts), which needs
-- to know the topic's last message is such a notice. A constant default: PostgreSQL adds the
-- column without rewriting the table.
ALTER TABLE message ADD COLUMN type SMALLINT NOT NULL DEFAULT 1;
