/*
 * svc_members.h: organization members and their roles, leaving an org,
 * and ownership transfer.
 *
 * Every change of who belongs to an org, or with which role, first locks
 * the org's row (svc_org_lock), so such changes in one org happen one at a
 * time and each sees the roles the previous one left: two simultaneous
 * ownership transfers end in one 200 and one 409. The database enforces
 * exactly one owner per org at commit.
 */
#ifndef SVC_MEMBERS_H
#define SVC_MEMBERS_H

#include "svc_tenancy.h"

/* Route handlers. */
svc_handler_t svc_h_members_list, svc_h_members_update, svc_h_members_remove, svc_h_orgs_transfer;

/* The routes' request bodies. */
extern const svc_field_t svc_body_member_update[], svc_body_transfer[];

/* A member; the keys the first page of members has beside them. */
extern const svc_schema_t svc_schema_member;
extern const svc_col_t svc_members_page_keys[];

#endif /* SVC_MEMBERS_H */
