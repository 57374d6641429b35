-- Who wrote a direct message to whom (Zulip indexes message by realm, sender and recipient):
-- guests limited by can_access_all_users_group may see the people they exchanged a 1:1
-- direct message with, and that is asked per pair of users (lib/direct-message-partners.ts).
-- Partial, so channel messages, most of the traffic, pay nothing for it on insert.
CREATE INDEX "message_direct_sender_recipient_idx" ON "message"("sender_id", "recipient_id") WHERE NOT "is_channel_message";
