-- Of the groups a batch touched, those left without a page go. Bound: the group ids.
DELETE FROM multidoc_group
WHERE id IN ((?) /*repeat*/)
  AND NOT EXISTS (SELECT 1 FROM multidoc_page p WHERE p.dup_group = multidoc_group.id)
