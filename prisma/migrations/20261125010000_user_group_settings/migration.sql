-- Zulip's NamedUserGroup.GROUP_PERMISSION_SETTINGS, stored per named group: each column names
-- the group (named, or anonymous: a row without a name) whose members hold the permission.
-- Anonymous groups have no settings of their own, every named group has all six.
ALTER TABLE "user_group"
  ADD COLUMN "can_add_members_group_id" INTEGER,
  ADD COLUMN "can_join_group_id" INTEGER,
  ADD COLUMN "can_leave_group_id" INTEGER,
  ADD COLUMN "can_manage_group_id" INTEGER,
  ADD COLUMN "can_mention_group_id" INTEGER,
  ADD COLUMN "can_remove_members_group_id" INTEGER;

-- Backfill with Zulip's defaults. "group_creator" is a new anonymous group holding the
-- creator, one per setting (a setting's anonymous group is edited in place later), and groups
-- without a creator get "nobody". The two scratch columns tie each new anonymous group to the
-- group and setting it is for, and go at the end.
ALTER TABLE "user_group"
  ADD COLUMN "backfill_for_group_id" INTEGER,
  ADD COLUMN "backfill_for_setting" TEXT;

INSERT INTO "user_group" ("realm_id", "is_system_group", "backfill_for_group_id", "backfill_for_setting")
SELECT g."realm_id", false, g."id", s.setting
FROM "user_group" g
CROSS JOIN (VALUES ('can_add_members_group'), ('can_manage_group')) AS s(setting)
WHERE g."name" IS NOT NULL AND NOT g."is_system_group" AND g."creator_id" IS NOT NULL;

INSERT INTO "user_group_membership" ("user_group_id", "user_profile_id")
SELECT a."id", g."creator_id"
FROM "user_group" a JOIN "user_group" g ON g."id" = a."backfill_for_group_id";

UPDATE "user_group" g SET "can_add_members_group_id" = a."id"
FROM "user_group" a
WHERE a."backfill_for_group_id" = g."id" AND a."backfill_for_setting" = 'can_add_members_group';

UPDATE "user_group" g SET "can_manage_group_id" = a."id"
FROM "user_group" a
WHERE a."backfill_for_group_id" = g."id" AND a."backfill_for_setting" = 'can_manage_group';

ALTER TABLE "user_group" DROP COLUMN "backfill_for_group_id", DROP COLUMN "backfill_for_setting";

-- System groups: nobody throughout.
UPDATE "user_group" g SET
  "can_add_members_group_id" = n."id",
  "can_join_group_id" = n."id",
  "can_leave_group_id" = n."id",
  "can_manage_group_id" = n."id",
  "can_mention_group_id" = n."id",
  "can_remove_members_group_id" = n."id"
FROM "user_group" n
WHERE n."realm_id" = g."realm_id" AND n."is_system_group" AND n."name" = 'role:nobody'
  AND g."is_system_group" AND g."name" IS NOT NULL;

-- Other named groups: nobody may join or remove members, everyone may leave and mention.
UPDATE "user_group" g SET
  "can_add_members_group_id" = coalesce(g."can_add_members_group_id", n."id"),
  "can_join_group_id" = n."id",
  "can_leave_group_id" = e."id",
  "can_manage_group_id" = coalesce(g."can_manage_group_id", n."id"),
  "can_mention_group_id" = e."id",
  "can_remove_members_group_id" = n."id"
FROM "user_group" n, "user_group" e
WHERE n."realm_id" = g."realm_id" AND n."is_system_group" AND n."name" = 'role:nobody'
  AND e."realm_id" = g."realm_id" AND e."is_system_group" AND e."name" = 'role:everyone'
  AND NOT g."is_system_group" AND g."name" IS NOT NULL;

ALTER TABLE "user_group" ADD CONSTRAINT "user_group_named_settings_check" CHECK (
  "name" IS NULL OR (
    "can_add_members_group_id" IS NOT NULL AND "can_join_group_id" IS NOT NULL AND
    "can_leave_group_id" IS NOT NULL AND "can_manage_group_id" IS NOT NULL AND
    "can_mention_group_id" IS NOT NULL AND "can_remove_members_group_id" IS NOT NULL));

ALTER TABLE "user_group" ADD CONSTRAINT "user_group_can_add_members_group_id_fkey" FOREIGN KEY ("can_add_members_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "user_group" ADD CONSTRAINT "user_group_can_join_group_id_fkey" FOREIGN KEY ("can_join_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "user_group" ADD CONSTRAINT "user_group_can_leave_group_id_fkey" FOREIGN KEY ("can_leave_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "user_group" ADD CONSTRAINT "user_group_can_manage_group_id_fkey" FOREIGN KEY ("can_manage_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "user_group" ADD CONSTRAINT "user_group_can_mention_group_id_fkey" FOREIGN KEY ("can_mention_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "user_group" ADD CONSTRAINT "user_group_can_remove_members_group_id_fkey" FOREIGN KEY ("can_remove_members_group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- The foreign keys' checks when a group row goes (an anonymous setting replaced) and the
-- "is this group used by a setting" question of deactivation look these up.
CREATE INDEX "user_group_can_add_members_group_id_idx" ON "user_group"("can_add_members_group_id");
CREATE INDEX "user_group_can_join_group_id_idx" ON "user_group"("can_join_group_id");
CREATE INDEX "user_group_can_leave_group_id_idx" ON "user_group"("can_leave_group_id");
CREATE INDEX "user_group_can_manage_group_id_idx" ON "user_group"("can_manage_group_id");
CREATE INDEX "user_group_can_mention_group_id_idx" ON "user_group"("can_mention_group_id");
CREATE INDEX "user_group_can_remove_members_group_id_idx" ON "user_group"("can_remove_members_group_id");
