-- AlterTable
ALTER TABLE "user_profile" ADD COLUMN     "allow_private_data_export" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "automatically_follow_topics_policy" SMALLINT NOT NULL DEFAULT 3,
ADD COLUMN     "automatically_follow_topics_where_mentioned" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "automatically_unmute_topics_in_muted_streams_policy" SMALLINT NOT NULL DEFAULT 2,
ADD COLUMN     "color_scheme" SMALLINT NOT NULL DEFAULT 1,
ADD COLUMN     "demote_inactive_streams" SMALLINT NOT NULL DEFAULT 1,
ADD COLUMN     "desktop_icon_count_display" SMALLINT NOT NULL DEFAULT 1,
ADD COLUMN     "display_emoji_reaction_users" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "email_notifications_batching_period_seconds" INTEGER NOT NULL DEFAULT 120,
ADD COLUMN     "emojiset" VARCHAR(30) NOT NULL DEFAULT 'google',
ADD COLUMN     "enable_digest_emails" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "enable_drafts_synchronization" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "enable_followed_topic_audible_notifications" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "enable_followed_topic_desktop_notifications" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "enable_followed_topic_email_notifications" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "enable_followed_topic_push_notifications" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "enable_followed_topic_wildcard_mentions_notify" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "enable_login_emails" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "enable_marketing_emails" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "enable_online_push_notifications" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "enter_sends" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "fluid_layout_width" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "hide_ai_features" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "high_contrast_mode" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "left_side_userlist" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "message_content_in_email_notifications" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "notification_sound" VARCHAR(30) NOT NULL DEFAULT 'zulip',
ADD COLUMN     "pm_content_in_desktop_notifications" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "presence_enabled" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "realm_name_in_email_notifications_policy" SMALLINT NOT NULL DEFAULT 1,
ADD COLUMN     "receives_typing_notifications" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "resolved_topic_notice_auto_read_policy" VARCHAR(30) NOT NULL DEFAULT 'except_followed',
ADD COLUMN     "starred_message_counts" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "translate_emoticons" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "user_list_style" SMALLINT NOT NULL DEFAULT 3,
ADD COLUMN     "web_animate_image_previews" VARCHAR(30) NOT NULL DEFAULT 'on_hover',
ADD COLUMN     "web_channel_default_view" SMALLINT NOT NULL DEFAULT 1,
ADD COLUMN     "web_escape_navigates_to_home_view" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "web_font_size_px" INTEGER NOT NULL DEFAULT 16,
ADD COLUMN     "web_home_view" VARCHAR(30) NOT NULL DEFAULT 'inbox',
ADD COLUMN     "web_inbox_show_channel_folders" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "web_left_sidebar_show_channel_folders" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "web_left_sidebar_unreads_count_summary" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "web_line_height_percent" INTEGER NOT NULL DEFAULT 140,
ADD COLUMN     "web_mark_read_on_scroll_policy" SMALLINT NOT NULL DEFAULT 1,
ADD COLUMN     "web_navigate_to_sent_message" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "web_stream_unreads_count_display_policy" SMALLINT NOT NULL DEFAULT 2,
ADD COLUMN     "web_suggest_update_timezone" BOOLEAN NOT NULL DEFAULT true;

-- CreateTable
CREATE TABLE "user_presence" (
    "user_profile_id" INTEGER NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "last_connected_time" TIMESTAMPTZ(6),
    "last_active_time" TIMESTAMPTZ(6),
    "last_update_id" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "user_presence_pkey" PRIMARY KEY ("user_profile_id")
);

-- CreateTable
CREATE TABLE "presence_sequence" (
    "realm_id" INTEGER NOT NULL,
    "last_update_id" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "presence_sequence_pkey" PRIMARY KEY ("realm_id")
);

-- CreateTable
CREATE TABLE "user_topic" (
    "id" SERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "stream_id" INTEGER NOT NULL,
    "recipient_id" INTEGER NOT NULL,
    "topic_name" VARCHAR(60) NOT NULL,
    "last_updated" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "visibility_policy" SMALLINT NOT NULL,

    CONSTRAINT "user_topic_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "muted_user" (
    "id" SERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "muted_user_id" INTEGER NOT NULL,
    "date_muted" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "muted_user_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "alert_word" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "word" VARCHAR(100) NOT NULL,

    CONSTRAINT "alert_word_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "bot_storage_data" (
    "id" SERIAL NOT NULL,
    "bot_profile_id" INTEGER NOT NULL,
    "key" TEXT NOT NULL,
    "value" TEXT NOT NULL,

    CONSTRAINT "bot_storage_data_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "user_presence_realm_id_last_update_id_idx" ON "user_presence"("realm_id", "last_update_id");

-- CreateIndex
CREATE INDEX "user_presence_realm_id_last_connected_time_idx" ON "user_presence"("realm_id", "last_connected_time");

-- CreateIndex
CREATE INDEX "user_topic_user_profile_id_visibility_policy_idx" ON "user_topic"("user_profile_id", "visibility_policy");

-- CreateIndex
CREATE INDEX "muted_user_muted_user_id_idx" ON "muted_user"("muted_user_id");

-- CreateIndex
CREATE UNIQUE INDEX "muted_user_user_profile_id_muted_user_id_key" ON "muted_user"("user_profile_id", "muted_user_id");

-- CreateIndex
CREATE INDEX "alert_word_realm_id_idx" ON "alert_word"("realm_id");

-- CreateIndex
CREATE UNIQUE INDEX "bot_storage_data_bot_profile_id_key_key" ON "bot_storage_data"("bot_profile_id", "key");

-- AddForeignKey
ALTER TABLE "user_presence" ADD CONSTRAINT "user_presence_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_presence" ADD CONSTRAINT "user_presence_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "presence_sequence" ADD CONSTRAINT "presence_sequence_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_topic" ADD CONSTRAINT "user_topic_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_topic" ADD CONSTRAINT "user_topic_stream_id_fkey" FOREIGN KEY ("stream_id") REFERENCES "stream"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "muted_user" ADD CONSTRAINT "muted_user_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "muted_user" ADD CONSTRAINT "muted_user_muted_user_id_fkey" FOREIGN KEY ("muted_user_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "alert_word" ADD CONSTRAINT "alert_word_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "bot_storage_data" ADD CONSTRAINT "bot_storage_data_bot_profile_id_fkey" FOREIGN KEY ("bot_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;


-- One visibility policy per user and topic, topics compared case-insensitively as in Zulip.
CREATE UNIQUE INDEX "user_topic_user_recipient_topic_key" ON "user_topic"("user_profile_id", "recipient_id", lower("topic_name"));

-- One alert word per user, compared case-insensitively.
CREATE UNIQUE INDEX "alert_word_user_word_key" ON "alert_word"("user_profile_id", lower("word"));
