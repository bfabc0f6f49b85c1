ALTER TABLE multidoc_page DROP COLUMN main_simhash;
