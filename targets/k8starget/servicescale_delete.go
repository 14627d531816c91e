package k8starget

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Deleted is what ClusterServices.Close removed and how long it took,
// until the API server listed none of the sweep's objects.
type Deleted struct {
	Services int           `json:"services"`
	Time     time.Duration `json:"time"`
	// Leftovers were still listed after the collection deletes, and were
	// deleted one by one.
	Leftovers int `json:"leftovers,omitempty"`
	// ServiceCollection: every shard's Services went by a DeleteCollection
	// (else some or all were deleted one by one).
	ServiceCollection bool `json:"service_collection,omitempty"`
}

// deleteServiceCollection deletes the dummy Services that selector
// matches with one DeleteCollection. client-go's typed Service client has
// no such method, though API servers serve it (v1.34 lists
// deletecollection for services), so it goes through the REST client; ok
// is false, with no error, where that is not possible (a server answering
// 405 or 404, a client without a REST client such as the fake clientset,
// a delete cut short): then the rest are deleted one by one.
func (c *ClusterServices) deleteServiceCollection(ctx context.Context, selector string) (ok bool, err error) {
	rc, isREST := c.Clientset.CoreV1().RESTClient().(*rest.RESTClient)
	if !isREST || rc == nil {
		return false, nil
	}
	if err := c.write(ctx); err != nil {
		return false, err
	}
	err = rc.Delete().Namespace(c.Namespace).Resource("services").
		VersionedParams(&metav1.ListOptions{LabelSelector: selector}, scheme.ParameterCodec).
		Body(&metav1.DeleteOptions{}).Do(ctx).Error()
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err):
		return false, nil
	case collectionCutShort(err):
		return false, nil
	}
	return false, fmt.Errorf("delete the dummy Services: %w", err)
}

// deleteSliceCollection deletes the dummy EndpointSlices that selector
// matches with one DeleteCollection; what it cannot (cut short, not
// served) is left for the one-by-one pass.
func (c *ClusterServices) deleteSliceCollection(ctx context.Context, selector string) error {
	err := c.write(ctx)
	if err == nil {
		err = c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector})
	}
	if err != nil && !apierrors.IsMethodNotSupported(err) && !apierrors.IsNotFound(err) && !collectionCutShort(err) {
		return fmt.Errorf("delete the dummy EndpointSlices: %w", err)
	}
	return nil
}

// deleteCollections deletes the dummies shard by shard (LabelShard): the
// Services and the EndpointSlices of each shard by one DeleteCollection
// each, up to Workers at once. It says whether every Service collection
// delete went through.
func (c *ClusterServices) deleteCollections(ctx context.Context) (servicesDone bool, err error) {
	type job struct {
		selector string
		services bool
	}
	var jobs []job
	for i := range scaleShards {
		sel := c.selector() + "," + LabelShard + "=" + strconv.Itoa(i)
		jobs = append(jobs, job{sel, true}, job{sel, false})
	}
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		errs    []error
		allDone = true
	)
	sem := make(chan struct{}, max(c.Workers, 1))
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var ok bool
			var err error
			if j.services {
				ok, err = c.deleteServiceCollection(ctx, j.selector)
			} else {
				ok, err = true, c.deleteSliceCollection(ctx, j.selector)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			allDone = allDone && ok
		}()
	}
	wg.Wait()
	return allDone, errors.Join(errs...)
}

// collectionCutShort: a DeleteCollection failed for a reason other than
// the caller's rights, such as the API server's request timeout (it
// deletes a collection one object at a time: 10,000 Services outlast its
// 60 s) or a reset stream. What it did not delete is left for the
// one-by-one pass; a refusal (401, 403) is the caller's to see.
func collectionCutShort(err error) bool {
	return !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) && !errors.Is(err, context.Canceled)
}

// removeSome deletes the named dummies and their EndpointSlices in
// parallel under the write limiter: one list of the slices first, instead
// of one per Service.
func (c *ClusterServices) removeSome(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	slices, err := c.slicesByService(ctx)
	if err != nil {
		return err
	}
	return c.parallel(ctx, "deleting", names, func(ctx context.Context, name string) error {
		return c.deleteDummy(ctx, name, slices[name])
	})
}

// deleteDummy deletes dummy name's EndpointSlices sliceNames, then the
// Service, each write paced by the limiter; gone already is fine.
func (c *ClusterServices) deleteDummy(ctx context.Context, name string, sliceNames []string) error {
	for _, s := range sliceNames {
		if err := c.write(ctx); err != nil {
			return err
		}
		if err := c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).Delete(ctx, s, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete EndpointSlice %s: %w", s, err)
		}
	}
	if err := c.write(ctx); err != nil {
		return err
	}
	if err := c.Clientset.CoreV1().Services(c.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Service %s: %w", name, err)
	}
	return nil
}

// slicesByService lists the dummies' EndpointSlices by Service name.
func (c *ClusterServices) slicesByService(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	err := c.eachSlice(ctx, func(s *discoveryv1.EndpointSlice) {
		svc := s.Labels[discoveryv1.LabelServiceName]
		out[svc] = append(out[svc], s.Name)
	})
	return out, err
}

// eachSlice calls fn on every dummy EndpointSlice, listed in pages.
func (c *ClusterServices) eachSlice(ctx context.Context, fn func(*discoveryv1.EndpointSlice)) error {
	opts := metav1.ListOptions{LabelSelector: c.selector(), Limit: 500}
	for {
		l, err := c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list dummy EndpointSlices: %w", err)
		}
		for i := range l.Items {
			fn(&l.Items[i])
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			return nil
		}
	}
}

// Close implements datapath.Datapath: every dummy goes, and Close returns
// once the API server lists none. The EndpointSlices and the Services go
// by DeleteCollections, one per shard and kind, in parallel
// (deleteCollections); whatever is left after that (a collection delete
// cut short or not served, as by the fake clientset for Services) is
// deleted one by one in parallel under the write limiter.
func (c *ClusterServices) Close() error {
	c.init()
	c.endPoll()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	have, err := c.existing(ctx)
	cancel()
	if err != nil {
		return err
	}
	// Its own context (Close also runs after Ctrl-C), given up only when
	// the removal stops making progress.
	stall := c.RemovalStall
	if stall <= 0 {
		stall = DefaultRemovalStall
	}
	ctx, stop := c.stallContext(stall)
	defer stop()
	if err := c.remove(ctx, start, len(have)); err != nil {
		if cause := context.Cause(ctx); ctx.Err() != nil && cause != nil {
			return fmt.Errorf("%w (%v)", err, cause)
		}
		return err
	}
	if len(have) > 0 {
		c.progressf("%d dummy Services and their EndpointSlices gone in %s\n", len(have), c.deleted.Time.Round(time.Millisecond))
	}
	return nil
}

// DefaultRemovalStall is how long Close waits without a delete sent
// before it gives up. No deadline from the count: it would have to guess
// the API server's pace, and 10,000 Services went at 30-40 deletes/s on
// the 2-core test cluster (kube-apiserver 1.34 releases a ClusterIP at a
// cost that grows with the Services), where a deadline from --api-qps cut
// the removal short after 3m40s.
const DefaultRemovalStall = 3 * time.Minute

// stallContext is cancelled (with a cause saying so) once no write was
// counted for stall; stop releases it.
func (c *ClusterServices) stallContext(stall time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	go func() {
		last, since := c.writes.Load(), time.Now()
		t := time.NewTicker(max(min(stall/10, 5*time.Second), time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				if n := c.writes.Load(); n != last {
					last, since = n, now
				} else if now.Sub(since) >= stall {
					cancel(fmt.Errorf("the removal made no progress for %s", stall))
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

// remove deletes the dummies by collections, then what is left one by
// one, and waits until the API server lists none (Close).
func (c *ClusterServices) remove(ctx context.Context, start time.Time, have int) error {
	servicesDone, err := c.deleteCollections(ctx)
	if err != nil {
		return err
	}
	// What is left (slices of Services already gone included), one by one.
	left, err := c.existing(ctx)
	if err != nil {
		return err
	}
	slices, err := c.slicesByService(ctx)
	if err != nil {
		return err
	}
	for svc := range slices {
		left[svc] = true
	}
	leftover := make([]string, 0, len(left))
	for n := range left {
		leftover = append(leftover, n)
	}
	sort.Strings(leftover)
	if err := c.removeSome(ctx, leftover); err != nil {
		return err
	}
	if err := c.waitGone(ctx); err != nil {
		return err
	}
	c.deleted = &Deleted{Services: have, Leftovers: len(leftover), Time: time.Since(start), ServiceCollection: servicesDone}
	return nil
}

// waitGone polls until the API server lists no dummy Service or
// EndpointSlice.
func (c *ClusterServices) waitGone(ctx context.Context) error {
	one := metav1.ListOptions{LabelSelector: c.selector(), Limit: 1}
	for {
		svcs, err := c.Clientset.CoreV1().Services(c.Namespace).List(ctx, one)
		if err != nil {
			return fmt.Errorf("list dummy Services: %w", err)
		}
		sl, err := c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).List(ctx, one)
		if err != nil {
			return fmt.Errorf("list dummy EndpointSlices: %w", err)
		}
		if len(svcs.Items) == 0 && len(sl.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dummy Services still listed after the deletes: %w", ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Deleted is what the last Close removed (nil before it ran).
func (c *ClusterServices) Deleted() *Deleted { return c.deleted }

func (c *ClusterServices) progressf(format string, a ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, format, a...)
	}
}
