-- The download route finds an export by its tarball's path, without credentials: an index,
-- not a scan of every organization's exports. A path names one export.
CREATE UNIQUE INDEX "realm_export_export_path_key" ON "realm_export"("export_path");
