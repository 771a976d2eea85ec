// Package cluster hosts toolscope agent trees as protoactor cluster grains.
package cluster
