-- Groups founded by a batch, and groups whose representative a batch's page became (its old
-- one's analysis could not be shared). Bound per row: id, domain_key, simhash, band0, band1,
-- band2, band3, rep, created_at.
INSERT INTO multidoc_group (id, domain_key, simhash, band0, band1, band2, band3, rep, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) /*repeat*/
ON DUPLICATE KEY UPDATE rep = VALUES(rep)
