//go:build !linux

package main

func probeDumpable() {}
