-- v20 is reserved for the console helper (issue 34) this session; this branch (issue 35,
-- h/i35-night) holds it empty so that its v21 runs on without a gap. Drop this file when
-- the real v20 lands.
SELECT 1;
