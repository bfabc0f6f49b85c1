-- Of the groups a batch touched, those whose representative left them (gone, its text changed,
-- or it joined another group) take their smallest page: every page of a group holds a copy of
-- its analysis and binding made for the group's text. Run after empty_groups.sql (a group left
-- here has a page). Bound: the group ids.
UPDATE multidoc_group
SET rep = (SELECT MIN(p.id) FROM multidoc_page p WHERE p.dup_group = multidoc_group.id)
WHERE id IN ((?) /*repeat*/)
  AND NOT EXISTS (SELECT 1 FROM multidoc_page p
                  WHERE p.id = multidoc_group.rep AND p.dup_group = multidoc_group.id)
