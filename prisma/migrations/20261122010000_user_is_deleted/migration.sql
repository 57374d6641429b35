-- Users whose profile was deleted on deactivation (DELETE /users/{id} with actions.delete_profile).
ALTER TABLE "user_profile" ADD COLUMN "is_deleted" BOOLEAN NOT NULL DEFAULT false;
