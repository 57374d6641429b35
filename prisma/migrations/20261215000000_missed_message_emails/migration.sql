-- Missed-message emails (Zulip's ScheduledMessageNotificationEmail): a message a user was
-- notified of while idle, waiting for their batching period to end. A user's rows are mailed
-- together once the earliest is due. One row per user and message.
CREATE TABLE "scheduled_message_notification_email" (
    "id" SERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "message_id" INTEGER NOT NULL,
    "trigger" VARCHAR(50) NOT NULL,
    "mentioned_user_group_id" INTEGER,
    "scheduled_timestamp" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "scheduled_message_notification_email_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "scheduled_message_notification_email_user_profile_id_message_id_key" ON "scheduled_message_notification_email"("user_profile_id", "message_id");

CREATE INDEX "scheduled_message_notification_email_message_id_idx" ON "scheduled_message_notification_email"("message_id");

ALTER TABLE "scheduled_message_notification_email" ADD CONSTRAINT "scheduled_message_notification_email_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "scheduled_message_notification_email" ADD CONSTRAINT "scheduled_message_notification_email_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Who may be emailed of a channel message beyond those it mentions, read by the send path
-- with its recipients: the topic's followers, and subscribers who asked for the channel's
-- emails (explicitly, or by their default for channels they left at it). Few rows each, so
-- each is an index of its own rather than a probe per subscriber.
CREATE INDEX "user_topic_followed_idx" ON "user_topic" ("recipient_id", lower("topic_name")) WHERE "visibility_policy" = 3;

CREATE INDEX "subscription_email_notifications_idx" ON "subscription" ("recipient_id") WHERE "email_notifications" AND "active";

CREATE INDEX "user_profile_stream_email_notifications_idx" ON "user_profile" ("realm_id") WHERE "enable_stream_email_notifications" AND "is_active";
