-- Mentions find users by name, compared case-insensitively (lib/rendering.ts). Without an
-- index the lookup lowercased every active user's name of the organization: 1.2 ms for
-- 1,001 users, growing with the organization. With it, a few index pages.
CREATE INDEX "user_profile_realm_id_lower_full_name_idx" ON "user_profile" ("realm_id", lower("full_name"));
