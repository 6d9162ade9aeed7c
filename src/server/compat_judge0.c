#include "server/compat.h"
enum MHD_Result al_compat_judge0(const al_compat_req *q)
{
	return al_compat_send(q, 404, json_pack("{s:s}", "error", "todo"), NULL, NULL);
}
