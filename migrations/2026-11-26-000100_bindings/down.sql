DROP TABLE binding_position;
DROP TABLE binding_page;
DROP TABLE binding_dict_phrase;
DROP TABLE binding_dict;
