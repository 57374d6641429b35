-- The RealmUserDefault of Zulip: the personal settings new members of the organization start
-- with, as chosen by its administrators (PATCH /realm/user_settings_defaults). Only the
-- settings changed from the Zulip defaults are kept, by API name. The default email address
-- visibility keeps its own column (realm.default_email_address_visibility).
ALTER TABLE "realm" ADD COLUMN "user_settings_defaults" JSONB NOT NULL DEFAULT '{}';
