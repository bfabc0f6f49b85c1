DROP TABLE partner_domain;
DROP TABLE yacobot_node;
