-- v7 (issue 10, the maker for real models): which rung of edit_file's matching ladder
-- applied an edit, so ticketctl logs and the bench can count them; and how many
-- compaction passes ran before a maker request.
ALTER TABLE tool_calls ADD COLUMN rung TEXT NOT NULL DEFAULT '';
ALTER TABLE model_calls ADD COLUMN compactions INTEGER NOT NULL DEFAULT 0 CHECK (compactions >= 0);
