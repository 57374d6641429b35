-- A user an administrator created through the API (POST /users) has not joined yet: as for an
-- imported stub account, date_joined becomes the time of their first login (spec 2.2). The
-- flag says the first login is still to come.
ALTER TABLE user_profile ADD COLUMN date_joined_at_first_login BOOLEAN NOT NULL DEFAULT false;
