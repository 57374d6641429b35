-- The ChannelFolder of Zulip: named groups of channels that clients show together in their left
-- sidebars (POST /channel_folders/create, PATCH /channel_folders and /channel_folders/{id}).
-- Folders are archived, never deleted. Names are unique per organization whatever their case.
CREATE TABLE "channel_folder" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "name" VARCHAR(60) NOT NULL,
    "description" VARCHAR(1024) NOT NULL DEFAULT '',
    "rendered_description" TEXT NOT NULL DEFAULT '',
    "order" INTEGER NOT NULL DEFAULT 0,
    "creator_id" INTEGER,
    "date_created" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "is_archived" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "channel_folder_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "channel_folder_realm_id_lower_name_key" ON "channel_folder"("realm_id", lower("name"));

ALTER TABLE "channel_folder" ADD CONSTRAINT "channel_folder_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "channel_folder" ADD CONSTRAINT "channel_folder_creator_id_fkey" FOREIGN KEY ("creator_id") REFERENCES "user_profile"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- The folder a channel is in (null: none).
ALTER TABLE "stream" ADD COLUMN "folder_id" INTEGER;
ALTER TABLE "stream" ADD CONSTRAINT "stream_folder_id_fkey" FOREIGN KEY ("folder_id") REFERENCES "channel_folder"("id") ON DELETE SET NULL ON UPDATE CASCADE;
CREATE INDEX "stream_folder_id_idx" ON "stream"("folder_id");

-- Audit rows about a folder name it, as Zulip records modified_channel_folder.
ALTER TABLE "realm_audit_log" ADD COLUMN "modified_channel_folder_id" INTEGER;
