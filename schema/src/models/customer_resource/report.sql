-- A run's outcome in a customer's row (docs/formats.md "Customer resources"): fetch_detail
-- comes as GBK bytes, stored as they are; item_num NULL (a run that read no item) keeps it.
UPDATE customer_resource
SET fetch_time = ?, fetch_status = ?, item_num = COALESCE(?, item_num), fetch_detail = ?
WHERE id = ?
