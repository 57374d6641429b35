-- can_create_topic_group (Zulip feature level 441): who may start a new topic in a channel.
-- Existing channels get the default, everyone in the organization.
ALTER TABLE "stream" ADD COLUMN "can_create_topic_group_id" INTEGER;

UPDATE "stream" SET "can_create_topic_group_id" = (
  SELECT g."id" FROM "user_group" g WHERE g."realm_id" = "stream"."realm_id" AND g."name" = 'role:everyone'
);

ALTER TABLE "stream" ALTER COLUMN "can_create_topic_group_id" SET NOT NULL;

ALTER TABLE "stream" ADD CONSTRAINT "stream_can_create_topic_group_id_fkey" FOREIGN KEY ("can_create_topic_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
