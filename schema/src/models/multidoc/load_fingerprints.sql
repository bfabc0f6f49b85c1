-- The evidence rows a batch of pages needs: those of the (domain, fingerprint) pairs its
-- blocks have, read through the primary key. Bound per pair: domain_key, fingerprint.
SELECT domain_key, fingerprint, pages, last_page, seen_on
FROM multidoc_fingerprint
WHERE (domain_key, fingerprint) IN ((?, ?) /*repeat*/)
