-- Start URLs already in the frontier (`yacobot url add`, docs/operations.md "yacobot:
-- exclusions and start URLs"): due now, with a hit if they had none (a URL is due only with
-- hits), and a priority of at least their hits. A URL parked as excluded comes back too.
-- Bound: now, then the ids.
-- MySQL applies the assignments left to right: download_prio sees the new hits.
UPDATE url
SET hits = GREATEST(hits, 1),
    download_prio = GREATEST(download_prio, hits),
    next_indexed = LEAST(next_indexed, ?)
WHERE id IN ((?) /*repeat*/)
