// Package kubernetes provides the manifests that run a ratecheck attack, or
// a capacity search, as the shards of a Kubernetes Indexed Job: pod i of n
// runs "ratecheck attack --shard i/n" (or "ratecheck capacity --shard i/n",
// the shards stepping in lockstep through a rendezvous folder on the
// volume), all start at one agreed instant, and each writes its run folder
// to a shared volume, from which the folders are copied out and analyzed
// together. See README.md beside this file.
//
// The manifests are plain YAML built from the few API fields they need;
// the tests decode them strictly into the Kubernetes API types.
package kubernetes
