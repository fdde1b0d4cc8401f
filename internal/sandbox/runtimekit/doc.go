// Package runtimekit is what the sandbox runtimes (docker, oci, kubernetes,
// microvm) share and their callers never see: the host side of the aster-init
// protocol (Session, AwaitHello), the part of Instance.Run and Close every
// runtime keeps the same way (InstanceState, RunParts, CgroupHostOOM), the
// head-and-tail output cap (Capture, LockedCapture), each sandbox's own uids
// (IdentityPool), the check of the aster-init binary (CheckInitBinary), the
// pruning of a runtime's caches (MarkUsed, PruneUnused) and gVisor's task
// limits (GVisorTaskLimits). Package sandbox stays the callers' contract:
// Spec, Result, the error classes, the Manager and the Runtime interface.
package runtimekit
