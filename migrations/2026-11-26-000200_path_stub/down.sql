DROP TABLE path_stub;
