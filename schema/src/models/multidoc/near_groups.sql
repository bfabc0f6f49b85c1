-- The groups of a domain whose text is near a page's (docs/multidoc.md "Duplicate groups"):
-- those sharing one of the four 16-bit bands of the page's fingerprint (an index each), kept
-- when at most 3 bits away, nearest first; with what their representative's rows hold, which
-- a page joining the group shares. Bound: domain_key and band0, domain_key and band1,
-- domain_key and band2, domain_key and band3, the page's simhash twice, the limit.
SELECT g.id AS group_id, g.simhash, g.rep,
       r.main_md5 AS rep_md5, r.categories AS rep_categories,
       r.category_names AS rep_category_names, r.model_checksum AS rep_model_checksum,
       r.dup_group AS rep_group, b.item AS rep_item
FROM (SELECT id FROM multidoc_group WHERE domain_key = ? AND band0 = ?
      UNION SELECT id FROM multidoc_group WHERE domain_key = ? AND band1 = ?
      UNION SELECT id FROM multidoc_group WHERE domain_key = ? AND band2 = ?
      UNION SELECT id FROM multidoc_group WHERE domain_key = ? AND band3 = ?) c
JOIN multidoc_group g ON g.id = c.id
LEFT JOIN multidoc_page r ON r.id = g.rep
LEFT JOIN binding_page b ON b.id = g.rep
WHERE BIT_COUNT(g.simhash ^ ?) <= 3
ORDER BY BIT_COUNT(g.simhash ^ ?), g.id
LIMIT ?
