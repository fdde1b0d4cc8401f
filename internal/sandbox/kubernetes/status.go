package kubernetes

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/textclip"
)

// startState is where a Pod stands on its way to running aster-init.
type startState struct {
	running   bool
	scheduled bool
	// unschedulable is the scheduler's reason while it cannot place the Pod.
	unschedulable string
	// err is a failure that will not heal by waiting.
	err error
}

// imageErrors are the waiting reasons of a container whose image cannot be had.
var imageErrors = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true,
	"ImageInspectError": true, "RegistryUnavailable": true, "SignatureValidationFailed": true,
}

// startErrors are the waiting reasons of a container that cannot start.
var startErrors = map[string]bool{
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
	"CrashLoopBackOff": true, "PreCreateHookError": true, "PreStartHookError": true, "PostStartHookError": true,
}

// startStateOf reads a Pod's status while it starts.
func startStateOf(p *corev1.Pod, gone bool) startState {
	var st startState
	if gone || p == nil {
		st.err = fmt.Errorf("the sandbox Pod was deleted before it started")
		return st
	}
	if p.DeletionTimestamp != nil {
		st.err = fmt.Errorf("the sandbox Pod %s is being deleted", p.Name)
		return st
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			st.scheduled = c.Status == corev1.ConditionTrue
			if c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				st.unschedulable = textclip.OneLine(c.Message, maxStatusLineBytes)
			}
		}
	}
	if p.Spec.NodeName != "" {
		st.scheduled = true
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason == "ErrImageNeverPull" {
			st.err = fmt.Errorf("the aster-init image %s is not on node %s, and an init image named without a registry is never pulled: %s", cs.Image, p.Spec.NodeName, initImageHowTo)
			return st
		}
		if w := cs.State.Waiting; w != nil && (imageErrors[w.Reason] || startErrors[w.Reason]) {
			st.err = fmt.Errorf("the aster-init image %s: %s: %s", cs.Image, w.Reason, textclip.OneLine(w.Message, maxStatusLineBytes))
			return st
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			st.err = fmt.Errorf("copying aster-init into the Pod failed: exit code %d, %s: %s", t.ExitCode, t.Reason, textclip.OneLine(t.Message, maxStatusLineBytes))
			return st
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != ContainerName {
			continue
		}
		switch {
		case cs.State.Running != nil:
			st.running = true
			return st
		case cs.State.Waiting != nil && imageErrors[cs.State.Waiting.Reason]:
			w := cs.State.Waiting
			st.err = fmt.Errorf("%w: %s cannot be run on the cluster: %s: %s", sandbox.ErrUnknownImage, cs.Image, w.Reason, textclip.OneLine(w.Message, maxStatusLineBytes))
			return st
		case cs.State.Waiting != nil && startErrors[cs.State.Waiting.Reason]:
			w := cs.State.Waiting
			st.err = fmt.Errorf("the sandbox container cannot start: %s: %s", w.Reason, textclip.OneLine(w.Message, maxStatusLineBytes))
			return st
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			st.err = fmt.Errorf("the sandbox container ended before its job: %s, exit code %d: %s", t.Reason, t.ExitCode, textclip.OneLine(t.Message, maxStatusLineBytes))
			return st
		}
	}
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		st.err = fmt.Errorf("the sandbox Pod ended before its job: %s %s: %s", p.Status.Phase, p.Status.Reason, textclip.OneLine(p.Status.Message, maxStatusLineBytes))
	}
	return st
}

// endState is how a Pod ended, once its sandbox container stopped.
type endState struct {
	ended bool
	// deadline: the kubelet stopped the Pod at activeDeadlineSeconds.
	deadline bool
	// oom: the container's last process was killed for memory.
	oom    bool
	reason string
	gone   bool
}

func endStateOf(p *corev1.Pod, gone bool) endState {
	if gone || p == nil {
		return endState{ended: true, gone: true, reason: "the sandbox Pod was deleted"}
	}
	var e endState
	if p.Status.Reason == "DeadlineExceeded" {
		e.ended, e.deadline = true, true
		e.reason = textclip.OneLine(p.Status.Message, maxStatusLineBytes)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != ContainerName || cs.State.Terminated == nil {
			continue
		}
		t := cs.State.Terminated
		e.ended = true
		// OOMKilled when the runtime saw the OOM event. A SIGKILLed aster-init
		// (137) in a Pod that was neither deleted nor past its deadline is the
		// OOM killer's doing too: the job cannot signal PID 1, and the kubelet
		// kills only at deletion or the deadline.
		e.oom = t.Reason == "OOMKilled" ||
			(t.ExitCode == 128+9 && p.DeletionTimestamp == nil && p.Status.Reason != "DeadlineExceeded")
		if e.reason == "" {
			e.reason = fmt.Sprintf("the sandbox container ended: %s, exit code %d", t.Reason, t.ExitCode)
		}
	}
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		e.ended = true
		if e.reason == "" {
			e.reason = fmt.Sprintf("the sandbox Pod ended: %s %s", p.Status.Phase, p.Status.Reason)
		}
	}
	return e
}

// imageID returns the image id the kubelet reported for the sandbox container.
func imageID(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == ContainerName {
			return cs.ImageID
		}
	}
	return ""
}

// maxStatusLineBytes caps the one-line texts this package makes of errors and reasons.
const maxStatusLineBytes = 512
