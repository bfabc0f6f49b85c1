-- The next live items after row id ?, of the resources whose class_id is in [?, ?), with
-- their feed URL: a chunk of a resend snapshot (docs/formats.md "Resend snapshots"), by id.
SELECT d.id, d.doc_id, d.content, COALESCE(s.url, '') AS url
FROM vr_data d
JOIN vr_resource r ON r.id = d.res_id
LEFT JOIN resource_status s ON s.id = d.status_id
WHERE d.id > ? AND d.data_status = ? AND r.class_id >= ? AND r.class_id < ?
ORDER BY d.id
LIMIT ?
