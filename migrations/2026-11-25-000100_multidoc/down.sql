DROP TABLE multidoc_position;
DROP TABLE multidoc_page;
DROP TABLE multidoc_fingerprint;
DROP TABLE multidoc_domain;
