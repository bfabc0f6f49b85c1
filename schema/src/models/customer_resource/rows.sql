-- A customer resource's rows (docs/formats.md "Customer resources"); the name as its bytes,
-- which the caller decodes from GBK.
SELECT id, CAST(res_name AS BINARY) AS res_name
FROM customer_resource
WHERE res_id = ?
ORDER BY id
