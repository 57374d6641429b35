-- Presence change ids come from one sequence instead of a locked row per organization.
CREATE SEQUENCE "user_presence_update_id_seq";
SELECT setval('user_presence_update_id_seq', GREATEST(1, (SELECT COALESCE(MAX("last_update_id"), 0) FROM "user_presence") + 1), false);

-- DropTable
DROP TABLE "presence_sequence";
