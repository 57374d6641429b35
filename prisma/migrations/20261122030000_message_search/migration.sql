-- Full-text search over topic and content (GET /messages with the search operator).
-- A generated column keeps the vector in step with every insert and edit, and a GIN index
-- serves the match. The schema language cannot express either, hence this hand-written step.
ALTER TABLE "message" ADD COLUMN "search_tsvector" tsvector
  GENERATED ALWAYS AS (to_tsvector('english', "subject" || ' ' || "content")) STORED;

CREATE INDEX "message_search_tsvector_idx" ON "message" USING gin ("search_tsvector");
