DROP TABLE vr_update_info;
DROP TABLE process_timestamp;
DROP TABLE vr_data;
DROP TABLE open_xml_format;
DROP TABLE resource_status;
DROP TABLE vr_open_datasource;
DROP TABLE vr_resource;
