-- Channels: group-valued permission settings on channels and organizations, default channels.
-- No channel rows existed before this migration, so the new NOT NULL columns need no default.
-- stream_post_policy is now derived from can_send_message_group, as in Zulip since feature level 333.

-- AlterTable
ALTER TABLE "realm" ADD COLUMN     "can_add_subscribers_group_id" INTEGER,
ADD COLUMN     "can_create_private_channel_group_id" INTEGER,
ADD COLUMN     "can_create_public_channel_group_id" INTEGER,
ADD COLUMN     "can_create_web_public_channel_group_id" INTEGER;

-- AlterTable
ALTER TABLE "stream" ADD COLUMN     "can_add_subscribers_group_id" INTEGER NOT NULL,
ADD COLUMN     "can_administer_channel_group_id" INTEGER NOT NULL,
ADD COLUMN     "can_delete_any_message_group_id" INTEGER NOT NULL,
ADD COLUMN     "can_delete_own_message_group_id" INTEGER NOT NULL,
ADD COLUMN     "can_move_messages_out_of_channel_group_id" INTEGER NOT NULL,
ADD COLUMN     "can_move_messages_within_channel_group_id" INTEGER NOT NULL,
ADD COLUMN     "can_remove_subscribers_group_id" INTEGER NOT NULL,
ADD COLUMN     "can_resolve_topics_group_id" INTEGER NOT NULL,
ADD COLUMN     "can_send_message_group_id" INTEGER NOT NULL,
ADD COLUMN     "can_subscribe_group_id" INTEGER NOT NULL,
ADD COLUMN     "first_message_id" INTEGER,
ADD COLUMN     "is_recently_active" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "topics_policy" VARCHAR(30) NOT NULL DEFAULT 'inherit',
DROP COLUMN "stream_post_policy";

-- CreateTable
CREATE TABLE "default_stream" (
    "realm_id" INTEGER NOT NULL,
    "stream_id" INTEGER NOT NULL,

    CONSTRAINT "default_stream_pkey" PRIMARY KEY ("realm_id","stream_id")
);

-- AddForeignKey
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_create_public_channel_group_id_fkey" FOREIGN KEY ("can_create_public_channel_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_create_private_channel_group_id_fkey" FOREIGN KEY ("can_create_private_channel_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_create_web_public_channel_group_id_fkey" FOREIGN KEY ("can_create_web_public_channel_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_add_subscribers_group_id_fkey" FOREIGN KEY ("can_add_subscribers_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stream" ADD CONSTRAINT "stream_can_add_subscribers_group_id_fkey" FOREIGN KEY ("can_add_subscribers_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stream" ADD CONSTRAINT "stream_can_remove_subscribers_group_id_fkey" FOREIGN KEY ("can_remove_subscribers_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stream" ADD CONSTRAINT "stream_can_administer_channel_group_id_fkey" FOREIGN KEY ("can_administer_channel_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stream" ADD CONSTRAINT "stream_can_delete_any_message_group_id_fkey" FOREIGN KEY ("can_delete_any_message_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stream" ADD CONSTRAINT "stream_can_delete_own_message_group_id_fkey" FOREIGN KEY ("can_delete_own_message_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stream" ADD CONSTRAINT "stream_can_move_messages_out_of_channel_group_id_fkey" FOREIGN KEY ("can_move_messages_out_of_channel_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stream" ADD CONSTRAINT "stream_can_move_messages_within_channel_group_id_fkey" FOREIGN KEY ("can_move_messages_within_channel_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stream" ADD CONSTRAINT "stream_can_send_message_group_id_fkey" FOREIGN KEY ("can_send_message_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stream" ADD CONSTRAINT "stream_can_subscribe_group_id_fkey" FOREIGN KEY ("can_subscribe_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stream" ADD CONSTRAINT "stream_can_resolve_topics_group_id_fkey" FOREIGN KEY ("can_resolve_topics_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "default_stream" ADD CONSTRAINT "default_stream_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "default_stream" ADD CONSTRAINT "default_stream_stream_id_fkey" FOREIGN KEY ("stream_id") REFERENCES "stream"("id") ON DELETE RESTRICT ON UPDATE CASCADE;


-- Existing organizations get the defaults organization creation now sets.
UPDATE "realm" SET
  "can_create_public_channel_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:members'),
  "can_create_private_channel_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:members'),
  "can_create_web_public_channel_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:owners'),
  "can_add_subscribers_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:members');
