DROP TABLE queue_applied;
DROP TABLE query_args;
DROP TABLE path_arg_name;
DROP TABLE url;
