-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "realm" (
    "id" SERIAL NOT NULL,
    "string_id" VARCHAR(40) NOT NULL,
    "name" VARCHAR(40) NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "deactivated" BOOLEAN NOT NULL DEFAULT false,
    "date_created" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "invite_required" BOOLEAN NOT NULL DEFAULT true,
    "emails_restricted_to_domains" BOOLEAN NOT NULL DEFAULT false,
    "default_email_address_visibility" SMALLINT NOT NULL DEFAULT 1,
    "default_language" VARCHAR(50) NOT NULL DEFAULT 'en',
    "waiting_period_threshold" INTEGER NOT NULL DEFAULT 0,
    "allow_message_editing" BOOLEAN NOT NULL DEFAULT true,
    "message_content_edit_limit_seconds" INTEGER DEFAULT 600,
    "message_content_delete_limit_seconds" INTEGER,
    "message_edit_history_visibility_policy" SMALLINT NOT NULL DEFAULT 1,
    "message_retention_days" INTEGER NOT NULL DEFAULT -1,
    "mandatory_topics" BOOLEAN NOT NULL DEFAULT false,
    "enable_spectator_access" BOOLEAN NOT NULL DEFAULT false,
    "password_auth_enabled" BOOLEAN NOT NULL DEFAULT true,
    "jwt_key" TEXT,
    "jwt_algorithms" TEXT[] DEFAULT ARRAY[]::TEXT[],

    CONSTRAINT "realm_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user_profile" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "email" VARCHAR(254) NOT NULL,
    "delivery_email" VARCHAR(254) NOT NULL,
    "full_name" VARCHAR(100) NOT NULL,
    "role" SMALLINT NOT NULL DEFAULT 400,
    "is_active" BOOLEAN NOT NULL DEFAULT true,
    "is_bot" BOOLEAN NOT NULL DEFAULT false,
    "bot_type" SMALLINT,
    "bot_owner_id" INTEGER,
    "api_key" VARCHAR(32) NOT NULL,
    "password_hash" TEXT,
    "date_joined" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_login" TIMESTAMPTZ(6),
    "is_imported_stub" BOOLEAN NOT NULL DEFAULT false,
    "is_mirror_dummy" BOOLEAN NOT NULL DEFAULT false,
    "can_create_users" BOOLEAN NOT NULL DEFAULT false,
    "can_change_user_emails" BOOLEAN NOT NULL DEFAULT false,
    "timezone" VARCHAR(40) NOT NULL DEFAULT '',
    "avatar_source" CHAR(1) NOT NULL DEFAULT 'G',
    "avatar_version" INTEGER NOT NULL DEFAULT 1,
    "email_address_visibility" SMALLINT NOT NULL DEFAULT 1,
    "default_language" VARCHAR(50) NOT NULL DEFAULT 'en',
    "enable_stream_desktop_notifications" BOOLEAN NOT NULL DEFAULT false,
    "enable_stream_email_notifications" BOOLEAN NOT NULL DEFAULT false,
    "enable_stream_push_notifications" BOOLEAN NOT NULL DEFAULT false,
    "enable_stream_audible_notifications" BOOLEAN NOT NULL DEFAULT false,
    "wildcard_mentions_notify" BOOLEAN NOT NULL DEFAULT true,
    "enable_desktop_notifications" BOOLEAN NOT NULL DEFAULT true,
    "enable_sounds" BOOLEAN NOT NULL DEFAULT true,
    "enable_offline_email_notifications" BOOLEAN NOT NULL DEFAULT true,
    "enable_offline_push_notifications" BOOLEAN NOT NULL DEFAULT true,
    "send_private_typing_notifications" BOOLEAN NOT NULL DEFAULT true,
    "send_stream_typing_notifications" BOOLEAN NOT NULL DEFAULT true,
    "send_read_receipts" BOOLEAN NOT NULL DEFAULT true,
    "twenty_four_hour_time" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "user_profile_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "recipient" (
    "id" SERIAL NOT NULL,
    "type" SMALLINT NOT NULL,
    "type_id" INTEGER NOT NULL,

    CONSTRAINT "recipient_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "stream" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "name" VARCHAR(60) NOT NULL,
    "description" VARCHAR(1024) NOT NULL DEFAULT '',
    "rendered_description" TEXT NOT NULL DEFAULT '',
    "date_created" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "creator_id" INTEGER,
    "recipient_id" INTEGER,
    "invite_only" BOOLEAN NOT NULL DEFAULT false,
    "is_web_public" BOOLEAN NOT NULL DEFAULT false,
    "history_public_to_subscribers" BOOLEAN NOT NULL DEFAULT true,
    "deactivated" BOOLEAN NOT NULL DEFAULT false,
    "message_retention_days" INTEGER,
    "stream_post_policy" SMALLINT NOT NULL DEFAULT 1,

    CONSTRAINT "stream_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "direct_message_group" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "hash" VARCHAR(40) NOT NULL,
    "recipient_id" INTEGER,
    "group_size" INTEGER NOT NULL,

    CONSTRAINT "direct_message_group_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "subscription" (
    "id" SERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "recipient_id" INTEGER NOT NULL,
    "active" BOOLEAN NOT NULL DEFAULT true,
    "is_user_active" BOOLEAN NOT NULL DEFAULT true,
    "color" VARCHAR(10) NOT NULL DEFAULT '#c2c2c2',
    "pin_to_top" BOOLEAN NOT NULL DEFAULT false,
    "is_muted" BOOLEAN NOT NULL DEFAULT false,
    "desktop_notifications" BOOLEAN,
    "audible_notifications" BOOLEAN,
    "push_notifications" BOOLEAN,
    "email_notifications" BOOLEAN,
    "wildcard_mentions_notify" BOOLEAN,

    CONSTRAINT "subscription_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "message" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "sender_id" INTEGER NOT NULL,
    "recipient_id" INTEGER NOT NULL,
    "subject" VARCHAR(60) NOT NULL DEFAULT '',
    "content" TEXT NOT NULL,
    "rendered_content" TEXT,
    "rendered_content_version" INTEGER,
    "date_sent" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sending_client" VARCHAR(30) NOT NULL DEFAULT '',
    "last_edit_time" TIMESTAMPTZ(6),
    "last_moved_time" TIMESTAMPTZ(6),
    "edit_history" JSONB,
    "is_channel_message" BOOLEAN NOT NULL,
    "has_attachment" BOOLEAN NOT NULL DEFAULT false,
    "has_image" BOOLEAN NOT NULL DEFAULT false,
    "has_link" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "message_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user_message" (
    "id" BIGSERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "message_id" INTEGER NOT NULL,
    "flags" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "user_message_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user_group" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "name" VARCHAR(100),
    "description" VARCHAR(1024) NOT NULL DEFAULT '',
    "is_system_group" BOOLEAN NOT NULL DEFAULT false,
    "deactivated" BOOLEAN NOT NULL DEFAULT false,
    "creator_id" INTEGER,
    "date_created" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "user_group_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user_group_membership" (
    "user_group_id" INTEGER NOT NULL,
    "user_profile_id" INTEGER NOT NULL,

    CONSTRAINT "user_group_membership_pkey" PRIMARY KEY ("user_group_id","user_profile_id")
);

-- CreateTable
CREATE TABLE "group_group_membership" (
    "supergroup_id" INTEGER NOT NULL,
    "subgroup_id" INTEGER NOT NULL,

    CONSTRAINT "group_group_membership_pkey" PRIMARY KEY ("supergroup_id","subgroup_id")
);

-- CreateTable
CREATE TABLE "custom_profile_field" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "name" VARCHAR(40) NOT NULL,
    "hint" VARCHAR(80) NOT NULL DEFAULT '',
    "field_type" SMALLINT NOT NULL,
    "field_data" TEXT NOT NULL DEFAULT '',
    "order" INTEGER NOT NULL DEFAULT 0,
    "display_in_profile_summary" BOOLEAN NOT NULL DEFAULT false,
    "required" BOOLEAN NOT NULL DEFAULT false,
    "editable_by_user" BOOLEAN NOT NULL DEFAULT true,
    "use_for_user_matching" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "custom_profile_field_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "custom_profile_field_value" (
    "id" SERIAL NOT NULL,
    "field_id" INTEGER NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "value" TEXT NOT NULL,
    "rendered_value" TEXT,

    CONSTRAINT "custom_profile_field_value_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "realm_audit_log" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "acting_user_id" INTEGER,
    "modified_user_id" INTEGER,
    "modified_stream_id" INTEGER,
    "modified_user_group_id" INTEGER,
    "event_type" SMALLINT NOT NULL,
    "event_time" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "extra_data" JSONB NOT NULL DEFAULT '{}',

    CONSTRAINT "realm_audit_log_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "realm_string_id_key" ON "realm"("string_id");

-- CreateIndex
CREATE UNIQUE INDEX "user_profile_api_key_key" ON "user_profile"("api_key");

-- CreateIndex
CREATE INDEX "user_profile_realm_id_is_active_idx" ON "user_profile"("realm_id", "is_active");

-- CreateIndex
CREATE INDEX "user_profile_bot_owner_id_idx" ON "user_profile"("bot_owner_id");

-- CreateIndex
CREATE UNIQUE INDEX "recipient_type_type_id_key" ON "recipient"("type", "type_id");

-- CreateIndex
CREATE UNIQUE INDEX "stream_recipient_id_key" ON "stream"("recipient_id");

-- CreateIndex
CREATE INDEX "stream_realm_id_deactivated_idx" ON "stream"("realm_id", "deactivated");

-- CreateIndex
CREATE UNIQUE INDEX "direct_message_group_recipient_id_key" ON "direct_message_group"("recipient_id");

-- CreateIndex
CREATE UNIQUE INDEX "direct_message_group_realm_id_hash_key" ON "direct_message_group"("realm_id", "hash");

-- CreateIndex
CREATE INDEX "subscription_recipient_id_active_is_user_active_idx" ON "subscription"("recipient_id", "active", "is_user_active");

-- CreateIndex
CREATE UNIQUE INDEX "subscription_user_profile_id_recipient_id_key" ON "subscription"("user_profile_id", "recipient_id");

-- CreateIndex
CREATE INDEX "message_recipient_id_id_idx" ON "message"("recipient_id", "id");

-- CreateIndex
CREATE INDEX "message_sender_id_id_idx" ON "message"("sender_id", "id");

-- CreateIndex
CREATE INDEX "message_realm_id_date_sent_idx" ON "message"("realm_id", "date_sent");

-- CreateIndex
CREATE INDEX "user_message_message_id_idx" ON "user_message"("message_id");

-- CreateIndex
CREATE UNIQUE INDEX "user_message_user_profile_id_message_id_key" ON "user_message"("user_profile_id", "message_id");

-- CreateIndex
CREATE UNIQUE INDEX "user_group_realm_id_name_key" ON "user_group"("realm_id", "name");

-- CreateIndex
CREATE INDEX "user_group_membership_user_profile_id_idx" ON "user_group_membership"("user_profile_id");

-- CreateIndex
CREATE INDEX "group_group_membership_subgroup_id_idx" ON "group_group_membership"("subgroup_id");

-- CreateIndex
CREATE UNIQUE INDEX "custom_profile_field_realm_id_name_key" ON "custom_profile_field"("realm_id", "name");

-- CreateIndex
CREATE INDEX "custom_profile_field_value_field_id_idx" ON "custom_profile_field_value"("field_id");

-- CreateIndex
CREATE UNIQUE INDEX "custom_profile_field_value_user_profile_id_field_id_key" ON "custom_profile_field_value"("user_profile_id", "field_id");

-- CreateIndex
CREATE INDEX "realm_audit_log_realm_id_event_time_idx" ON "realm_audit_log"("realm_id", "event_time");

-- CreateIndex
CREATE INDEX "realm_audit_log_modified_user_id_idx" ON "realm_audit_log"("modified_user_id");

-- AddForeignKey
ALTER TABLE "user_profile" ADD CONSTRAINT "user_profile_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_profile" ADD CONSTRAINT "user_profile_bot_owner_id_fkey" FOREIGN KEY ("bot_owner_id") REFERENCES "user_profile"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stream" ADD CONSTRAINT "stream_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stream" ADD CONSTRAINT "stream_creator_id_fkey" FOREIGN KEY ("creator_id") REFERENCES "user_profile"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "direct_message_group" ADD CONSTRAINT "direct_message_group_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "subscription" ADD CONSTRAINT "subscription_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "subscription" ADD CONSTRAINT "subscription_recipient_id_fkey" FOREIGN KEY ("recipient_id") REFERENCES "recipient"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_sender_id_fkey" FOREIGN KEY ("sender_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_recipient_id_fkey" FOREIGN KEY ("recipient_id") REFERENCES "recipient"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_message" ADD CONSTRAINT "user_message_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_message" ADD CONSTRAINT "user_message_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group" ADD CONSTRAINT "user_group_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group" ADD CONSTRAINT "user_group_creator_id_fkey" FOREIGN KEY ("creator_id") REFERENCES "user_profile"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group_membership" ADD CONSTRAINT "user_group_membership_user_group_id_fkey" FOREIGN KEY ("user_group_id") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group_membership" ADD CONSTRAINT "user_group_membership_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "group_group_membership" ADD CONSTRAINT "group_group_membership_supergroup_id_fkey" FOREIGN KEY ("supergroup_id") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "group_group_membership" ADD CONSTRAINT "group_group_membership_subgroup_id_fkey" FOREIGN KEY ("subgroup_id") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "custom_profile_field" ADD CONSTRAINT "custom_profile_field_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "custom_profile_field_value" ADD CONSTRAINT "custom_profile_field_value_field_id_fkey" FOREIGN KEY ("field_id") REFERENCES "custom_profile_field"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "custom_profile_field_value" ADD CONSTRAINT "custom_profile_field_value_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "realm_audit_log" ADD CONSTRAINT "realm_audit_log_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "realm_audit_log" ADD CONSTRAINT "realm_audit_log_acting_user_id_fkey" FOREIGN KEY ("acting_user_id") REFERENCES "user_profile"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "realm_audit_log" ADD CONSTRAINT "realm_audit_log_modified_user_id_fkey" FOREIGN KEY ("modified_user_id") REFERENCES "user_profile"("id") ON DELETE SET NULL ON UPDATE CASCADE;


-- Indexes the Prisma schema language cannot express (kept in sync by hand, see the schema comments).

-- Emails and channel names are unique per organization regardless of case.
CREATE UNIQUE INDEX "user_profile_realm_id_lower_email_key" ON "user_profile" ("realm_id", lower("email"));
CREATE UNIQUE INDEX "user_profile_realm_id_lower_delivery_email_key" ON "user_profile" ("realm_id", lower("delivery_email"));
CREATE UNIQUE INDEX "stream_realm_id_lower_name_key" ON "stream" ("realm_id", lower("name"));

-- Topic narrows compare topics case-insensitively.
CREATE INDEX "message_recipient_id_upper_subject_id_idx" ON "message" ("recipient_id", upper("subject"), "id");

-- Per-user flag lookups (bits from packages/db/src/flags.ts): unread, starred, mentions,
-- direct messages.
CREATE INDEX "user_message_unread_idx" ON "user_message" ("user_profile_id", "message_id") WHERE ("flags" & 1) = 0;
CREATE INDEX "user_message_starred_idx" ON "user_message" ("user_profile_id", "message_id") WHERE ("flags" & 2) <> 0;
CREATE INDEX "user_message_mentioned_idx" ON "user_message" ("user_profile_id", "message_id") WHERE ("flags" & 56) <> 0;
CREATE INDEX "user_message_private_idx" ON "user_message" ("user_profile_id", "message_id") WHERE ("flags" & 4096) <> 0;
