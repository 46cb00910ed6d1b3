/* yaml_depth.c — the nesting of a YAML text's collections, read event by event before it is loaded (yaml_depth.h). */
#include <yaml.h>

#include "yaml_depth.h"
#include "banned.h"

/* +1 for a collection's start, -1 for its end, 0 for anything else. */
static int level_change(yaml_event_type_t type)
{
	if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT)
		return 1;
	if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT)
		return -1;
	return 0;
}

int yaml_too_deep(const char *text, size_t len, int max)
{
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser))
		return 0;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	int depth = 0, ended = 0;
	while (!ended && depth <= max) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&parser, &ev))
			break; /* the load reports it */
		depth += level_change(ev.type);
		ended = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return depth > max;
}

int yaml_check_depth(const char *origin, const char *text, size_t len, struct err *e)
{
	if (!yaml_too_deep(text, len, YAML_DEPTH_MAX))
		return 0;
	return err_set(e, E_CONFIG, "%s: invalid YAML: nested more than %d levels deep", origin, YAML_DEPTH_MAX);
}
