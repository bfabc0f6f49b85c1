-- Each URL's analysis, new or again (docs/formats.md "Page analysis tables"). Bound per row:
-- id, outcome, lang, categories, category_names, main_md5, main_simhash, dup_group,
-- template_share, model_checksum, analysed_at, counted_at, archive_file, archive_item. A page analysed again keeps the time
-- it was counted into its domain's evidence unless this analysis counted it (NULL keeps it).
INSERT INTO multidoc_page (id, outcome, lang, categories, category_names, main_md5,
                           main_simhash, dup_group, template_share, model_checksum,
                           analysed_at, counted_at, archive_file, archive_item)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) /*repeat*/
ON DUPLICATE KEY UPDATE
    outcome = VALUES(outcome),
    lang = VALUES(lang),
    categories = VALUES(categories),
    category_names = VALUES(category_names),
    main_md5 = VALUES(main_md5),
    main_simhash = VALUES(main_simhash),
    dup_group = VALUES(dup_group),
    template_share = VALUES(template_share),
    model_checksum = VALUES(model_checksum),
    analysed_at = VALUES(analysed_at),
    counted_at = COALESCE(VALUES(counted_at), counted_at),
    archive_file = VALUES(archive_file),
    archive_item = VALUES(archive_item)
