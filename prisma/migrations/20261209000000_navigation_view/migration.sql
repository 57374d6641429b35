-- The NavigationView of Zulip: a person settings for the views at the top of the left
-- sidebar (GET, POST, PATCH and DELETE /navigation_views). A built-in view (inbox, recent)
-- has no name, a custom one (any other URL fragment) has one. A fragment and a name appear
-- once per person (names may be null for built-in views, which a unique index allows).
CREATE TABLE "navigation_view" (
    "id" SERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "fragment" TEXT NOT NULL,
    "is_pinned" BOOLEAN NOT NULL DEFAULT false,
    "name" TEXT,

    CONSTRAINT "navigation_view_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "navigation_view_user_profile_id_fragment_key" ON "navigation_view"("user_profile_id", "fragment");
CREATE UNIQUE INDEX "navigation_view_user_profile_id_name_key" ON "navigation_view"("user_profile_id", "name");

ALTER TABLE "navigation_view" ADD CONSTRAINT "navigation_view_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE CASCADE ON UPDATE CASCADE;
