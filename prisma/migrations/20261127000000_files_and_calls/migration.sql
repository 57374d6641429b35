-- Files and calls (issue 19): upload quotas, thumbnails and video-call tokens.

-- Zulip Realm.upload_quota_gb (NULL means no quota) and the organization file size limit
-- (NULL means the server MAX_FILE_UPLOAD_SIZE_MIB).
ALTER TABLE realm
  ADD COLUMN upload_quota_gb INTEGER,
  ADD COLUMN max_file_upload_size_mib INTEGER;

-- Zulip ImageAttachment, kept on the attachment itself: the number of frames (animated
-- images have more than one) and the thumbnails made so far, as a Zulip StoredThumbnailFormat
-- list [{extension, max_width, max_height, animated, content_type, width, height, byte_size}],
-- NULL while none has been made.
ALTER TABLE attachment
  ADD COLUMN frames INTEGER,
  ADD COLUMN thumbnail_metadata JSONB;

-- Zulip UserProfile.zoom_token: the Zoom OAuth token of the user (access and refresh token,
-- expiry), NULL when they have none.
ALTER TABLE user_profile
  ADD COLUMN zoom_token JSONB;
