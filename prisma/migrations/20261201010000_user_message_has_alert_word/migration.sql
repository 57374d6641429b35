-- is:alerted reads the viewer's copies flagged has_alert_word (lib/narrow.ts), rare like
-- starred ones. Without an index of its own it read every copy of the viewer's down from the
-- anchor. Zulip has the same partial index (zerver_usermessage_has_alert_word_message_id).
-- Copies without the flag, nearly all, cost an insert only the predicate's test.
CREATE INDEX "user_message_has_alert_word_idx" ON "user_message" ("user_profile_id", "message_id") WHERE ("flags" & 1024) <> 0;
