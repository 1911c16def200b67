-- v19 is reserved for the review-rounds helper (issue 34) this session; this branch
-- (issue 35, h/i35-night) holds it empty so that its v21 runs on without a gap. Drop
-- this file when the real v19 lands.
SELECT 1;
