-- Every rule of the given paths (the loader looks up a batch's arguments at once).
SELECT path_hash, name, significant
FROM path_arg_name
WHERE path_hash IN ((?) /*repeat*/)
