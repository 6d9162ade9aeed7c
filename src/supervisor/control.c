/* Control requests to a supervisor (see control.h). */
#include "supervisor/control.h"

#include <errno.h>
#include <string.h>

#include <jansson.h>

#include "supervisor/record_file.h"
#include "supervisor/run_records.h"

int al_control_write(int dirfd, uint64_t epoch, al_control_action action)
{
	json_t *o = json_pack("{s:I, s:s}", "epoch", (json_int_t)epoch,
			      "action",
			      action == AL_CONTROL_STOP ? "stop" : "interrupt");
	if (o == NULL)
		return -ENOMEM;
	int rc = al_record_file_write_json(dirfd, AL_RF_CONTROL, o, 0600);
	json_decref(o);
	return rc;
}

int al_control_read(int dirfd, uint64_t *epoch, al_control_action *action)
{
	json_t *o = NULL;
	int rc = al_record_file_read_json(dirfd, AL_RF_CONTROL, 4096, &o);
	if (rc < 0)
		return rc;
	json_t *e = json_object_get(o, "epoch"), *a = json_object_get(o, "action");
	if (!json_is_integer(e) || json_integer_value(e) < 0 ||
	    !json_is_string(a)) {
		rc = -EBADMSG;
	} else if (strcmp(json_string_value(a), "interrupt") == 0) {
		*action = AL_CONTROL_INTERRUPT;
	} else if (strcmp(json_string_value(a), "stop") == 0) {
		*action = AL_CONTROL_STOP;
	} else {
		rc = -EBADMSG;
	}
	if (rc == 0)
		*epoch = (uint64_t)json_integer_value(e);
	json_decref(o);
	return rc;
}
