-- The path binder's next domain after ? (docs/bindings.md "The path binder"): the first
-- domain in order that has a bound page, a path with an insignificant query argument, or a
-- stored stub (to withdraw). Walks ix_url_domain and stops at the first hit. Bound: the
-- domain after which to look, three times.
SELECT MIN(d.domain) AS domain FROM (
    (SELECT u.domain FROM url u
     WHERE u.domain > ?
       AND (EXISTS (SELECT 1 FROM binding_page b WHERE b.id = u.id)
            OR EXISTS (SELECT 1 FROM path_arg_name p
                       WHERE p.path_hash = u.path_hash AND p.significant = 0))
     ORDER BY u.domain LIMIT 1)
    UNION ALL
    (SELECT s.domain FROM path_stub s WHERE s.domain > ? ORDER BY s.domain LIMIT 1)
) d
