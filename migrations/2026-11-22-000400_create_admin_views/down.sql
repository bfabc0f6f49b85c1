DROP VIEW v_resource_health;
DROP VIEW v_node_load;
