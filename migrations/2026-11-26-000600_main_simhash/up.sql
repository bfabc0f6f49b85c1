-- The near-duplicate fingerprint of each page's main text (issue 27; docs/multidoc.md
-- "simhash"): with main_md5 (the exact copy), what tells two URLs showing the same page apart
-- from two that differ, for the duplicate groups and for qargfilter.
ALTER TABLE multidoc_page
    ADD COLUMN main_simhash BIGINT UNSIGNED NULL COMMENT '64-bit SimHash of the main text''s word 3-shingles: near-duplicates are at most 3 bits apart; NULL: not analysed, or no word in the main text'
    AFTER main_md5;
