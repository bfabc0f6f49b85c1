-- Withdrawing a partner feed (the source's DeleteTask; docs/operations.md "yacobot: partner
-- feeds", docs/formats.md "Withdrawing a resource"): `yacobot resource disable|remove` set
-- res_status to 2 or 3, and the resources worker emits a DELETE item for every live item of
-- the resource, marks the rows deleted, then sets 0 (disable) or deletes the resource's rows
-- (remove). Only the column's comment changes: the values are new, the type is not.
ALTER TABLE vr_resource
    MODIFY COLUMN res_status TINYINT UNSIGNED NOT NULL DEFAULT 1 COMMENT '1 enabled; 0 disabled (withdrawn: its items were deleted downstream); 2 withdrawal asked for, 3 removal asked for (the resources worker withdraws its items, then sets 0 or deletes the resource)';
